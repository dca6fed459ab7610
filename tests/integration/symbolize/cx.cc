// SPDX-License-Identifier: Apache-2.0
// cx.cc - fixture: C++ names (namespace, const method, template) to demangle.
#include <cstdio>
#include <vector>
namespace shapes {
struct Circle {
	double r;
	__attribute__((noinline)) double area(int scale) const { return 3.14159 * r * r * scale; }
};
template <typename T> __attribute__((noinline)) T total(const std::vector<T> &v)
{
	T s = 0;
	for (auto x : v)
		s += x;
	return s;
}
} // namespace shapes
int main(int argc, char **)
{
	shapes::Circle c{ (double)argc };
	std::vector<long> v{ 1, 2, 3 };
	std::printf("%f %ld\n", c.area(2), shapes::total(v));
}
