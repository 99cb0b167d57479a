package counter

import "github.com/zkrecipes/zkrecipes/hold"

// BeforeWrite makes every try of n run f between its read and its write,
// with the promoted hold if there is one: a test's way to put a rival
// write, a fault or a lost lock exactly there.
func BeforeWrite[T int32 | int64](n *Number[T], f func(h *hold.Hold)) { n.v.beforeWrite = f }
