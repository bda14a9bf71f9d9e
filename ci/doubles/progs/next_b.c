/* libnext_b.so: the second definition of cw_probe(), returning 2. */
int cw_probe(void) { return 2; }
