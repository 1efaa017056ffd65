// Package rawtcp serves TCP connections whose reads and writes are made
// with raw system calls, outside the Go scheduler's system-call
// accounting.
//
// # Why
//
// A read or write on a non-blocking socket never waits in the kernel, but
// it can be descheduled there. Writing a reply on loopback runs the
// receiver's side of TCP in the writer's system call and wakes the
// reader, and the woken reader often preempts the writer before it
// returns to user space. To the Go scheduler, which wraps every
// syscall.Syscall in entersyscall and exitsyscall, that thread has been
// in a system call for tens of microseconds. sysmon then retakes its P,
// wakes another thread to run it, and sysmon itself keeps polling every
// 20 µs because it keeps finding work. When the first thread returns it
// has lost its P and goes to sleep again. Every reply paid for a handful
// of wakeups and context switches, and on a two-core machine with the
// client on the same cores the CPUs went idle 5-7% of the time between
// wakeups (measured with perf sched; see docs/benchmarks.md).
//
// syscall.RawSyscall leaves the P with the thread, as a plain function
// call would. The readiness waits stay with the runtime's poller through
// syscall.RawConn, so deadlines, Close and netpoll work as for any
// net.Conn: Read and Write call read(2) and sendto(2) with MSG_NOSIGNAL
// until they would block, and then let RawConn wait for readiness.
//
// # Where
//
// ops wraps the listeners of the pgwire gateway, the Bigtable API and the
// tablet servers. Other operating systems get the listener unchanged.
package rawtcp
