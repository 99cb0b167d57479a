package framework

// WithProtectedID lets the tests choose a protected create's id, to leave
// the node an earlier session of ours would have left.
var WithProtectedID = withProtectedID

// ValidateCreatePath is the path check of a create, sequential or not.
var ValidateCreatePath = validatePath
