/* hookgen's stand-in for <GL/gl.h>: only the types CUDA's GL interop declarations use. */
typedef unsigned int GLuint;
typedef unsigned int GLenum;
