// Placeholder translation unit; the shared argument groups land here.
#include "shardgate/status.h"
