package framework

// WithProtectedID lets the tests choose a protected create's id, to leave
// the node an earlier session of ours would have left.
func WithProtectedID(id string) CreateOption { return withProtectedID(id, "") }

// ValidateCreatePath is the path check of a create, sequential or not.
var ValidateCreatePath = validatePath
