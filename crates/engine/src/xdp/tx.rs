//! XDP transmit (see the module table in `xdp`).
