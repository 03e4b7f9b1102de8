package run

import (
	"sync"

	"github.com/deer-go/deer-go/biz/model"
)

// queue hands a run's events to its reader. Appends never block, so a slow client cannot stall the run; the
// reader drains everything that is there at each wake-up.
type queue struct {
	mu     sync.Mutex
	events []model.Event
	closed bool
	wake   chan struct{}
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

func (q *queue) push(e model.Event) {
	q.mu.Lock()
	if !q.closed {
		q.events = append(q.events, e)
	}
	q.mu.Unlock()
	q.signal()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drain takes the pending events; done is true once the queue is closed and empty.
func (q *queue) drain() (evs []model.Event, done bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs, q.events = q.events, nil
	return evs, q.closed && len(evs) == 0
}
