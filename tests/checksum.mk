# Shard checksums (CRC-32C, the manifest's crc32c): tests/test_checksum.c compares the hardware
# path, the portable loop and a bit-at-a-time reference (plain, ASan+UBSan, valgrind through the
# generic rules; quick level under the sanitizers).
UNIT_SRCS += tests/test_checksum.c
