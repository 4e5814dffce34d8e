/* The scalar build of the edit body: 64-bit words, one pair at a time. */
#include "edit_kernel.h"
#define EDIT_PAIR edit_pair_scalar
#define EDIT_PATH_ENTRY edit_path_scalar
#include "edit_body.h"
