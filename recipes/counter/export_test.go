package counter

import "github.com/zkrecipes/zkrecipes/hold"

// BeforeWrite makes every try of l run f between its read and its write,
// with the promoted hold if there is one: a test's way to put a rival
// write, a fault or a lost lock exactly there.
func BeforeWrite(l *Long, f func(h *hold.Hold)) { l.n.v.beforeWrite = f }

// BeforeWriteBytes is BeforeWrite for a Bytes.
func BeforeWriteBytes(b *Bytes, f func(h *hold.Hold)) { b.beforeWrite = f }
