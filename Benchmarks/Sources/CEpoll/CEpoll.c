// The wrappers are all in include/CEpoll.h; SwiftPM wants a source file for the target.
#include "CEpoll.h"
