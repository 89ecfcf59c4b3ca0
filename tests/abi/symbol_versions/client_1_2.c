/* A program that uses a function of ABI 1.2 (gw_allreduce_compressed_ef): linked against a 1.2 library
 * it needs the version node GRADWIRE_1.2, so the dynamic loader refuses to start it against an older
 * library instead of letting it fail at its first call. */
#include <gradwire/gradwire.h>

#include <stdio.h>

int main(void) {
  /* NULL handles: the call only has to be reachable; it reports GW_ERR_INVALID_ARGUMENT. */
  gw_status s = gw_allreduce_compressed_ef(NULL, NULL, NULL, NULL, NULL, GW_REDUCE_SUM);
  printf("started: libgradwire implements ABI %u.%u; gw_allreduce_compressed_ef(NULL, ...) is %s\n",
         (unsigned)gw_abi_version_major(), (unsigned)gw_abi_version_minor(), gw_status_string(s));
  return s == GW_ERR_INVALID_ARGUMENT ? 0 : 1;
}
