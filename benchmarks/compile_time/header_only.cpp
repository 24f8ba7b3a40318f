// Compile-time probe: the umbrella header and an empty main.
#include <fusegrad/fusegrad.hpp>

int main() { return 0; }
