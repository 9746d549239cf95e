//! Measuring the tester itself (being written).
