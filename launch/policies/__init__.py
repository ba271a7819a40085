"""Policies by name: :mod:`.registry` says which processes each policy needs and builds each role's core;
:mod:`.hybrid` holds the entries of Hawk, Eagle and their ablations. A new policy is one core module plus
one entry here (DESIGN §2). The bottom group: it imports the cores and ``common`` only."""
