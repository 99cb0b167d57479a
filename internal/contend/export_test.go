package contend

// SetTestHookBeforeWatch sets testHookBeforeWatch until the test ends.
func SetTestHookBeforeWatch(cleanup func(func()), f func()) {
	testHookBeforeWatch.Store(&f)
	cleanup(func() { testHookBeforeWatch.Store(nil) })
}
