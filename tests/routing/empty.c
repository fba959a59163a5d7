/* Built like libgraphmem.so, with nothing in it: the toolchain's own init entries. */
int gm_routing_empty_unused;
