package contend

// SetTestHookBeforeWatch sets testHookBeforeWatch until the test ends.
func SetTestHookBeforeWatch(cleanup func(func()), f func()) {
	testHookBeforeWatch.Store(&f)
	cleanup(func() { testHookBeforeWatch.Store(nil) })
}

// SetTestHookRelist sets testHookRelist until the test ends.
func SetTestHookRelist(cleanup func(func()), f func()) {
	testHookRelist.Store(&f)
	cleanup(func() { testHookRelist.Store(nil) })
}
