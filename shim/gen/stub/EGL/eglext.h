/* hookgen's stand-in for <EGL/egl.h> and <EGL/eglext.h>: only the types CUDA's EGL interop uses. */
typedef void *EGLImageKHR;
typedef void *EGLStreamKHR;
typedef void *EGLSyncKHR;
typedef int EGLint;
typedef unsigned int EGLenum;
