"""cuda_objects: compile .cu files with the system nvcc into .o files that a
cc_library takes as srcs (link @cuda//:cudart beside them).

Each source becomes one genrule running
  /usr/local/cuda/bin/nvcc -std=c++17 -O3 -Xcompiler -fPIC
      -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
      -I/usr/local/cuda/include -I/usr/local/cuda/include/cccl -I. -c SRC -o OUT
in the execution root, so sources include project headers as "kernels/...".
"""

NVCC = "/usr/local/cuda/bin/nvcc"

NVCC_FLAGS = " ".join([
    "-std=c++17",
    "-O3",
    "-Xcompiler -fPIC",
    "-gencode arch=compute_90,code=sm_90",
    "-gencode arch=compute_90,code=compute_90",
    "-I/usr/local/cuda/include",
    "-I/usr/local/cuda/include/cccl",
    "-I.",
])

def cuda_objects(name, srcs, hdrs = []):
    """Declares one genrule per .cu source; returns the list of .o labels.

    Args:
      name: prefix for the generated genrule names.
      srcs: .cu files in this package.
      hdrs: headers the sources include (inputs of every compile).
    """
    objs = []
    for src in srcs:
        base = src[:-len(".cu")]
        out = base + ".cu.o"
        native.genrule(
            name = name + "_" + base.replace("/", "_"),
            srcs = [src] + hdrs,
            outs = [out],
            cmd = "%s %s -c $(location %s) -o $@" % (NVCC, NVCC_FLAGS, src),
            message = "nvcc " + src,
        )
        objs.append(out)
    return objs
