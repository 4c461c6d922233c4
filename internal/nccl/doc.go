// Package nccl loads NVIDIA's collective communication library
// (libnccl.so.2) at run time with dlopen and calls the few functions
// tensor parallelism needs through a table of dlsym'd pointers: unique
// ids, communicator set-up and tear-down, grouped calls and the
// all-reduce. The build needs no NCCL headers or library; a machine
// without NCCL gets a clear error from Open and runs on one GPU.
//
// NVLink multicast (NVLS) stays off: every communicator is created with
// NCCL_NVLS_ENABLE=0 in the environment, and nothing here calls
// cuMulticastCreate.
package nccl
