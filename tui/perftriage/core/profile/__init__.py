"""Kernel summaries of profiler traces (torch.profiler / Kineto Chrome traces,
nsys ``cuda_gpu_kern_sum`` CSV): which kernels eat the step, grouped into
buckets by name rules, with GPU idle share and exposed communication.

Textual-free; used by ``perftriage trace``, the capture service and the
Profile view alike."""
