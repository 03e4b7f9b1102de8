package app_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkIdleWaitingThreadMemory measures the resident memory a thread costs while it waits for plan review:
// runs hold memory only while they execute; a paused thread lives in the store.
func BenchmarkIdleWaitingThreadMemory(b *testing.B) {
	s := &script{}
	e := newEnv(b, s.respond)
	s.site = e.site.URL
	const threads = 100
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	b.ResetTimer()
	var perThread float64
	for i := 0; i < b.N; i++ {
		before := heap()
		for j := 0; j < threads; j++ {
			evs := e.chat(baseBody(fmt.Sprintf("idle-%d-%d", i, j), "Eiffel Tower?"))
			if last(evs).Name != "interrupt" {
				b.Fatal("thread did not pause for review")
			}
		}
		time.Sleep(50 * time.Millisecond)
		after := heap()
		perThread = (float64(after) - float64(before)) / threads
	}
	b.ReportMetric(perThread, "heap-bytes/waiting-thread")
}
