package store

import (
	"context"
	"testing"
)

func TestMemoryCopiesAndDeletes(t *testing.T) {
	ctx := context.Background()
	s := NewMemory()
	buf := []byte("abc")
	if err := s.Set(ctx, "t", buf); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'x'
	got, ok, err := s.Get(ctx, "t")
	if err != nil || !ok || string(got) != "abc" {
		t.Fatalf("Get = %q %v %v, want abc", got, ok, err)
	}
	got[1] = 'y'
	again, _, _ := s.Get(ctx, "t")
	if string(again) != "abc" {
		t.Fatalf("store shares its buffer: %q", again)
	}
	if err := s.Delete(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(ctx, "t"); ok {
		t.Fatal("checkpoint still there after Delete")
	}
}
