//! A member's role in a tenant, and what each role may do.
//!
//! Three roles, from most to least: an **owner** runs the tenant (its team,
//! its settings, its API tokens and webhooks, and everything an admin
//! does); an **admin** runs its courses (shares, resources, codes,
//! learners); **support** reads the console (codes, learners, access
//! records, the audit log) to answer learners, and changes nothing.
//!
//! Every console server function and `/api/v1` admin route names the one
//! [`Permission`] it needs; [`Role::allows`] is the only table that says
//! which role has it, so the pages (which hide what a role cannot do) and
//! the server (which refuses it) cannot disagree.

use crate::text_enum::text_enum;

text_enum! {
    /// A member's role in a tenant (`tenant_members.role`).
    pub enum Role (InvalidRole: "a role is owner, admin or support") {
        /// The tenant's team, settings, tokens and webhooks, and all an admin does.
        Owner = "owner",
        /// Shares, resources, codes and learners.
        Admin = "admin",
        /// Reads the console; changes nothing.
        Support = "support",
    }
}

/// What a console action needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// See the console: shares, codes, learners, access records, audit.
    ViewConsole,
    /// Change courses: shares, resources, codes (issue, revoke, unbind,
    /// replace) and learners (suspend); see newly issued codes.
    ManageCourses,
    /// API tokens, webhooks and shops. A role allowed it is also allowed
    /// `ManageCourses` (a shop's deliveries issue codes of the courses):
    /// the console's shop forms check this one alone.
    ManageIntegrations,
    /// Members, invitations and the tenant's settings.
    ManageTeam,
}

impl Permission {
    /// Every permission, for tables and tests.
    pub const ALL: [Permission; 4] = [
        Self::ViewConsole,
        Self::ManageCourses,
        Self::ManageIntegrations,
        Self::ManageTeam,
    ];
}

impl Role {
    /// Whether a member with this role may do what `permission` covers.
    pub fn allows(self, permission: Permission) -> bool {
        match permission {
            Permission::ViewConsole => true,
            Permission::ManageCourses => matches!(self, Self::Owner | Self::Admin),
            Permission::ManageIntegrations | Permission::ManageTeam => self == Self::Owner,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_has_exactly_its_permissions() {
        use Permission::*;
        let has = |role: Role| -> Vec<Permission> {
            Permission::ALL
                .into_iter()
                .filter(|p| role.allows(*p))
                .collect()
        };
        assert_eq!(
            has(Role::Owner),
            vec![ViewConsole, ManageCourses, ManageIntegrations, ManageTeam]
        );
        assert_eq!(has(Role::Admin), vec![ViewConsole, ManageCourses]);
        assert_eq!(has(Role::Support), vec![ViewConsole]);
    }

    /// The console's shop forms check `ManageIntegrations` alone, where
    /// the API asks a token for both: what a shop issues is codes of the
    /// courses, so no role may connect one without managing courses.
    #[test]
    fn whoever_manages_integrations_manages_courses() {
        for &role in Role::ALL {
            if role.allows(Permission::ManageIntegrations) {
                assert!(role.allows(Permission::ManageCourses), "{role:?}");
            }
        }
    }

    #[test]
    fn roles_are_their_words() {
        for &role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Ok(role));
        }
        assert!(Role::parse("superuser").is_err());
    }
}
