# shellcheck shell=bash
# Sourced by the scripts that run our binaries on the GPU machine (device-check.sh,
# profile-gpu-step.sh). NCCL and cuDNN are the machine's (autodist-runtime and the tests link
# them): its CUDA's, or those PyTorch's wheels bring, which the loader does not know of.
# use_machine_libraries OUT adds their folders to LD_LIBRARY_PATH and notes which in
# OUT/device.txt. cuDNN's libcudnn.so.9 opens its sub-libraries (libcudnn_cnn.so.9, ...) from the
# same path.

use_machine_library() {
  local out=$1 name=$2 soname=$3
  if ! ldconfig -p | grep -qF "$soname"; then
    local found folder
    found=$(find / -xdev -name "$soname" -print -quit 2>/dev/null || true)
    if [[ -n "$found" ]]; then
      folder=$(dirname "$found")
      export LD_LIBRARY_PATH="$folder${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      echo "$name from $found" >>"$out/device.txt"
    fi
  fi
}

use_machine_libraries() {
  use_machine_library "$1" NCCL libnccl.so.2
  use_machine_library "$1" cuDNN libcudnn.so.9
}
