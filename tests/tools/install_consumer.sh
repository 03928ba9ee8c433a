#!/bin/sh
# loom_install_consumer: installs the build into a prefix, builds examples/consumer and every C++
# program of docs/library.md against the install with find_package(Loom), runs them, and checks
# that the installed `loom` finds its data (configs, RTL) in the prefix.
# Usage: install_consumer.sh CMAKE BUILD_DIR SOURCE_DIR WORK_DIR HEADER_COUNT [CMAKE_FLAGS]
set -e
cmake=$1 build=$2 src=$3 dir=$4 headers=$5 flags=$6
step() {  # runs "$@" with its output in $dir.$name.log, shown when it fails
  name=$1
  shift
  "$@" > "$dir.$name.log" 2>&1 || { cat "$dir.$name.log"; echo "install_consumer: $name failed"; exit 1; }
}
rm -rf "$dir"
mkdir -p "$dir/programs"
step install "$cmake" --install "$build" --prefix "$dir/prefix"
# docs/library.md's ```cpp blocks, each a whole program.
awk -v d="$dir/programs" '/^```cpp$/ { n++; f = sprintf("%s/library_%d.cc", d, n); next } /^```/ { f = "" } f != "" { print > f }' \
  "$src/docs/library.md"
blocks=$(grep -c '^```cpp$' "$src/docs/library.md")
step configure "$cmake" -S "$src/examples/consumer" -B "$dir/build" -G Ninja -DCMAKE_PREFIX_PATH="$dir/prefix" \
  -DCMAKE_BUILD_TYPE=Release -DLOOM_EXPECTED_HEADERS="$headers" -DLOOM_DOC_PROGRAMS="$dir/programs" $flags
step build "$cmake" --build "$dir/build"
"$dir/build/loom_consumer"
ran=0
for p in "$dir"/build/library_*; do
  "$p" || { echo "install_consumer: docs/library.md program $(basename "$p") failed"; exit 1; }
  ran=$((ran + 1))
done
[ "$ran" -eq "$blocks" ] && [ "$ran" -gt 0 ] || { echo "install_consumer: $ran of $blocks programs ran"; exit 1; }
echo "docs/library.md: $ran of $blocks programs built and ran"
test -x "$dir/prefix/bin/loom"
"$dir/prefix/bin/loom" hw-params --config "$dir/prefix/share/loom/configs/default.json" --out "$dir/pkg.sv"
# The installed tool reads the RTL it ships from its own prefix, not from this source tree.
"$dir/prefix/bin/loom" hw-kernel --out "$dir/kernel" > "$dir.kernel.log" 2>&1 || { cat "$dir.kernel.log"; exit 1; }
# The Python package, where the install puts it, compiling and running a built-in model.
site=$(ls -d "$dir"/prefix/lib/python3*/site-packages 2> /dev/null | head -1)
if [ -n "$site" ] && [ -f "$site/loom/__init__.py" ]; then
  step python env PYTHONPATH="$site" /usr/bin/python3 -c \
    "import numpy, loom; m = loom.compile('mlp'); assert m.run(numpy.zeros(m.inputs[0]['shape'], numpy.float32))[0].shape == (1, 10); assert loom.__file__.startswith('$site')"
  echo "installed python package: import loom from $site"
fi
"$dir/prefix/bin/loom" hw-report --help | grep -F -- "$dir/prefix/share/loom" > /dev/null &&
  echo "installed loom reads its RTL from $dir/prefix/share/loom"
