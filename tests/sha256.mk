# SHA-256 (the digest of files and tensors): tests/test_sha256.c checks the NIST messages, every
# length to 300 against a reference written from the standard, the SHA-NI path against the
# portable one, the hex form, and the system's sha256sum on generated files (plain, ASan+UBSan,
# valgrind through the generic rules; quick level under the sanitizers).
UNIT_SRCS += tests/test_sha256.c
