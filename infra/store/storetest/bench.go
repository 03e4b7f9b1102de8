package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/deer-go/deer-go/infra/store"
)

// Bench measures the hot paths of a run: saving and loading a 64 KiB graph checkpoint, and appending events one
// per commit (a streaming token) or fifty per commit (a batched flush). open must return a new, empty store.
func Bench(b *testing.B, open func(b *testing.B) store.Store) {
	cp := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range cp {
		cp[i] = byte(rng.UintN(256))
	}
	ctx := context.Background()

	b.Run("CheckpointSave", func(b *testing.B) {
		s := open(b)
		b.SetBytes(int64(len(cp)))
		for b.Loop() {
			if err := s.Set(ctx, "bench", cp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CheckpointLoad", func(b *testing.B) {
		s := open(b)
		if err := s.Set(ctx, "bench", cp); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(cp)))
		for b.Loop() {
			if got, ok, err := s.Get(ctx, "bench"); err != nil || !ok || len(got) != len(cp) {
				b.Fatalf("Get = %d bytes, %v, %v", len(got), ok, err)
			}
		}
	})
	for _, per := range []int{1, 50} {
		b.Run(fmt.Sprintf("CommitEvents/%d", per), func(b *testing.B) {
			s := open(b)
			if err := s.Commit(ctx, store.Commit{Thread: &store.Thread{ID: "bench", Status: store.StatusRunning}}); err != nil {
				b.Fatal(err)
			}
			next, commits := int64(1), 0
			for b.Loop() {
				evs := make([]store.Event, per)
				for i := range evs {
					evs[i] = ev(next, "message_chunk", fmt.Sprintf(
						`{"thread_id":"bench","agent":"researcher","id":"m1","role":"assistant","content":"token %d of a streamed answer"}`, next))
					next++
				}
				if err := s.Commit(ctx, store.Commit{ThreadID: "bench", Events: evs}); err != nil {
					b.Fatal(err)
				}
				commits++
			}
			b.ReportMetric(float64(commits*per)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
