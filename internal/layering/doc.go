// Package layering holds the test of the project's import layering: which
// package may import which, so that the folders keep saying where things
// live (see README's Layout and DESIGN.md §1). It has no code of its own.
package layering
