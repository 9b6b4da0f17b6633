import sys
from pathlib import Path

# synthetic.py and the scenario scripts live beside the tests.
sys.path.insert(0, str(Path(__file__).parent))
