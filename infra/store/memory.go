// Package store keeps the graph's checkpoints.
package store

import (
	"context"
	"sync"
)

// Memory is an in-process checkpoint store (Eino's compose.CheckPointStore). Checkpoints are copied in and out,
// so callers never share a buffer with the store.
type Memory struct {
	mu sync.RWMutex
	m  map[string][]byte
}

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{m: map[string][]byte{}} }

// Get returns the checkpoint saved under id.
func (s *Memory) Get(_ context.Context, id string) ([]byte, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.m[id]
	if !ok {
		return nil, false, nil
	}
	return append([]byte(nil), b...), true, nil
}

// Set saves a checkpoint under id.
func (s *Memory) Set(_ context.Context, id string, cp []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = append([]byte(nil), cp...)
	return nil
}

// Delete removes the checkpoint saved under id.
func (s *Memory) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
	return nil
}
