"""Real images shared by the papers' real-image claims (JSL-5, JSL-6, LI-5, [PK22]): datasets in their
original formats, small image classifiers, and their training."""
