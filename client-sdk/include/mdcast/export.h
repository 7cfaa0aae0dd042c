// Symbol visibility of libmdcast. The library is built with hidden visibility;
// only what is marked MDCAST_API is part of the installed ABI.
#pragma once

#define MDCAST_API __attribute__((visibility("default")))
