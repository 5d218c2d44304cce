package ect1

// The BPF object and its Go bindings are generated and committed, so that
// building needs no clang. Rebuilding them needs clang, llvm-strip and
// libbpf-dev's headers (scripts/deps.sh --dev): run go generate here.
//go:generate go tool bpf2go -no-global-types -cflags "-O2 -g -Wall -Werror" ect1 bpf/ect1.c
