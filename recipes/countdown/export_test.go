package countdown

// SetHookBeforeWrite makes f run before each multi that sets or counts
// down a latch, until restore.
func SetHookBeforeWrite(f func()) (restore func()) {
	testHookBeforeWrite.Store(&f)
	return func() { testHookBeforeWrite.Store(nil) }
}
