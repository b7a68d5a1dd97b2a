package join

// idPool hands out the ids of slots kept in fixed-size chunks (rows, flat
// rows, key states): a released id is reused before a new one is taken.
type idPool struct {
	free []int32 // released ids, reused last-in first-out
	next int32   // ids handed out so far
}

// take returns an id, and whether it is a new one (its chunk may not
// exist yet).
func (p *idPool) take() (id int32, fresh bool) {
	if n := len(p.free); n > 0 {
		id = p.free[n-1]
		p.free = p.free[:n-1]
		return id, false
	}
	id = p.next
	p.next++
	return id, true
}

// release makes id available to take again.
func (p *idPool) release(id int32) { p.free = append(p.free, id) }
