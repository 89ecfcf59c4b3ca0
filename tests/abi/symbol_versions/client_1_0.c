/* A program that uses only functions of ABI 1.0: it starts against any libgradwire.so.0 of major 1. */
#include <gradwire/gradwire.h>

#include <stdio.h>

int main(void) {
  printf("started: libgradwire implements ABI %u.%u\n", (unsigned)gw_abi_version_major(),
         (unsigned)gw_abi_version_minor());
  return gw_abi_version_major() == 1u ? 0 : 1;
}
