"""One fuzz target: a libFuzzer binary for tools/fuzz and a corpus replay test for tools/test."""

def fuzz_target(name, deps, seeds):
    """NAME_fuzz.cc defines LLVMFuzzerTestOneInput.

    Makes NAME_fuzzer (clang + libFuzzer; built only by tools/fuzz, under --config=fuzz), NAME_replay
    (a g++ test running every seed and every regressions/NAME/ input through the target) and NAME_seeds
    (the seed paths, one a line, for tools/fuzz).
    """
    corpus = seeds + native.glob(["seeds/" + name + "/**", "regressions/" + name + "/**"])
    native.cc_library(
        name = name + "_target",
        srcs = [name + "_fuzz.cc"],
        deps = deps + [":fuzz_input"],
        alwayslink = True,
    )
    native.cc_binary(
        name = name + "_fuzzer",
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual"],
        deps = [":" + name + "_target"],
    )
    native.filegroup(name = name + "_corpus", srcs = corpus)
    native.cc_test(
        name = name + "_replay",
        size = "small",
        srcs = ["replay_main.cc"],
        args = ["$(locations :" + name + "_corpus)"],
        data = [":" + name + "_corpus"],
        deps = [":" + name + "_target"],
    )
    native.genrule(
        name = name + "_seeds",
        srcs = [":" + name + "_corpus"],
        outs = [name + "_seeds.txt"],
        cmd = "for f in $(SRCS); do echo $$f; done > $@",
    )
