"""HSDAG, structure-aware device placement (paper 004): node features (section 2.3)."""
