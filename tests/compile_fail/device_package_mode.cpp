// Misuse: a device program in package mode (Note [package mode]): libfusegrad's engines are
// compiled for the host, so the device backend with the package's macro must not build.
#define FUSEGRAD_DEVICE
#define FUSEGRAD_SEPARATE_ENGINES
#include <fusegrad/core/config.hpp>

int main() { return 0; }
