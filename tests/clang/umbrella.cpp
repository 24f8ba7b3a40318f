// Every umbrella header, for tests/clang/run.sh.
#include <fusegrad/data.hpp>
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>
#include <fusegrad/train.hpp>

int main() {}
