package framework_test

import (
	"os"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }
