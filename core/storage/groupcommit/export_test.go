package groupcommit

// Queued is how many Commits wait for a write (for the tests).
func Queued(q *Queue) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}
