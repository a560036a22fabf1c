//! What a learner does and sees: the share page, entering a code, opening a
//! resource (here and from other sites), its bytes, what they are refused,
//! their courses, and asking to move a code to another account.

mod code_entry;
mod content;
mod cross_site;
mod my_courses;
mod pages;
mod refusals;
mod share_page;
mod transfers;
