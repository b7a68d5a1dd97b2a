package kv

// Declared reports whether the backend has a state named name: declared
// since it was opened, or restored with it. An operator whose state layout
// changed uses it to refuse a checkpoint in the old layout instead of
// ignoring the old state.
func (b *Backend) Declared(name string) bool {
	_, ok := b.byName[name]
	return ok
}
