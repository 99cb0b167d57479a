package framework_test

import (
	"os"
	"testing"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }
