//! XDP receive (see the module table in `xdp`).
