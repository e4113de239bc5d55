/* The implementation alone (extern linkage), linked with user.c. */
#define STS_IMPLEMENTATION
#include "safetensors_spark.h"
