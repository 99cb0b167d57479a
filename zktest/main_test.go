package zktest_test

import (
	"os"
	"testing"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// One server for the package's Example; the tests start their own.
func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }
