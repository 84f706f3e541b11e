"""Training loops with checkpoints and resume (REINFORCE for ordering, paper 000 4.3)."""
