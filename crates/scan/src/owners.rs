//! Owners' names for `--group-by user|group`, resolved from the system (passwd and group
//! through NSS, so LDAP and SSSD names too) once per row, after the walk.

use storlab_model::scan::{GroupBy, Owner, OwnerKind};

/// The owner of a row: its id and the system's name for it (None when it has none: a uid
/// left by a deleted account).
pub fn owner(group_by: GroupBy, id: u32) -> Owner {
    let (by, name) = match group_by {
        GroupBy::Group => (
            OwnerKind::Group,
            uzers::get_group_by_gid(id).map(|g| g.name().to_string_lossy().into_owned()),
        ),
        _ => (
            OwnerKind::User,
            uzers::get_user_by_uid(id).map(|u| u.name().to_string_lossy().into_owned()),
        ),
    };
    Owner { by, id, name }
}
