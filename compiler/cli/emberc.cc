// emberc: placeholder until the driver lands (next commit).
#include <cstdio>
int main() {
  std::fprintf(stderr, "emberc: not built yet\n");
  return 1;
}
