package hold

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes"
)

// ErrReleasedByClose is what Release says of a hold its recipe's Close
// gave back already: it matches zkrecipes.ErrReleased (released, once) and
// zkrecipes.ErrClosed (by whom), in every recipe.
var ErrReleasedByClose = fmt.Errorf("%w by its recipe's Close: %w", zkrecipes.ErrReleased, zkrecipes.ErrClosed)
