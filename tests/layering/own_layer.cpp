// The control of back_edge.cpp: the same target setup reaches its own layer's headers.
#include "audit/store.hpp"
